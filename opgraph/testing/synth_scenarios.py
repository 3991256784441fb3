"""The synthesizer's scenarios: one function per trace shape, drawn on a TraceBuilder.

Each ``_<scenario>(b, steps, rng)`` lays out ``steps`` ProfilerSteps of its timeline on
the :class:`~opgraph.testing.synth_builder.TraceBuilder` ``b`` and returns the one-line
description written into the answers; :data:`BUILDERS` maps scenario names to them and
to the builder options they need. Times are integer **ns** (``US`` = 1,000 ns per µs);
the trace carries them as Kineto µs.
"""

from __future__ import annotations

import random
from typing import Any, Callable

from opgraph.testing.synth_builder import TraceBuilder
from opgraph.testing.synth_model import BASE_NS, BWD_TID, NS_FLOAT_BASE_NS, SIDE_STREAM, STREAM, US, SynthEvent


def _cpu_bound(b: TraceBuilder, steps: int, rng: random.Random) -> str:
    """Per step: inside a Python ``forward`` frame, 8 forward ops on the main thread (every
    other one ``aten::linear`` > ``aten::addmm``), each launching a 5 µs kernel, 60 µs apart;
    then the main thread waits in ``run_backward`` while 4 backward ops run on the autograd
    thread (tid 101), each with a ``fwdbwd`` flow from a forward op."""
    fwd_names = ("aten::linear", "aten::relu", "aten::linear", "aten::sigmoid")
    s = BASE_NS
    for k in range(1, steps + 1):
        step = b.open("annotation", f"ProfilerStep#{k}", s)
        fwd = b.span("python", "model.py(12): forward", s + 5 * US, s + 815 * US, parent=step)
        rb = b.span("python", "<built-in method run_backward of torch._C._EngineBase object>", s + 818 * US,
                    s + 1165 * US, parent=step)
        fwd_ops: list[SynthEvent] = []
        for i in range(8):
            t = s + 10 * US + i * 100 * US
            name = fwd_names[i % 4]
            op = b.span("cpu_op", name, t, t + 40 * US, parent=fwd, args={"Sequence number": i})
            inner = op
            if name == "aten::linear":
                inner = b.span("cpu_op", "aten::addmm", t + 5 * US, t + 35 * US, parent=op)
            rt = b.runtime("cudaLaunchKernel", t + 20 * US, t + 30 * US, parent=inner)
            b.launch("kernel", f"void fwd_kernel_{i % 4}<float>(float*, int)", rt, 5 * US)
            fwd_ops.append(op)
        for j in range(4):
            t = s + 820 * US + j * 100 * US
            src = fwd_ops[7 - 2 * j]
            op = b.span("cpu_op", f"{src.name.split('::')[-1].capitalize()}Backward0", t, t + 40 * US,
                        tid=BWD_TID, args={"Sequence number": 7 - 2 * j, "Fwd thread id": 1})
            rt = b.runtime("cudaLaunchKernel", t + 20 * US, t + 30 * US, parent=op)
            b.launch("kernel", f"void bwd_kernel_{j}<float>(float*, int)", rt, 5 * US)
            b.add_fwdbwd(src, op)
        b.add_handoff(rb, op)
        b.close(step, s + 1230 * US)
        s = step.end + 50 * US
    return ("CPU-bound: short kernels behind long CPU gaps, a backward thread with fwdbwd "
            "flows; the GPU idles waiting for launches.")


def _gpu_bound(b: TraceBuilder, steps: int, rng: random.Random) -> str:
    """Per step: a python_function around 6 ops launching 500 µs kernels 35 µs apart (they
    queue back to back), then cudaDeviceSynchronize until the last kernel ends + 2 µs; a
    gpu_user_annotation ProfilerStep range on stream 7."""
    s = BASE_NS
    for k in range(1, steps + 1):
        step = b.open("annotation", f"ProfilerStep#{k}", s)
        py = b.span("python", "nn/modules/module.py(1527): _call_impl", s + 5 * US, s + 225 * US,
                    parent=step)
        acts = []
        for i in range(6):
            t = s + 10 * US + i * 35 * US
            op = b.span("cpu_op", "aten::mm", t, t + 30 * US, parent=py)
            rt = b.runtime("cudaLaunchKernel", t + 10 * US, t + 20 * US, parent=op)
            acts.append(b.launch("kernel", "ampere_sgemm_128x64_nn", rt, 500 * US))
        sync = b.synchronize("cudaDeviceSynchronize", s + 230 * US, parent=step, stream=None)
        b.close(step, sync.end + 8 * US)
        b.gpu_annotation(step, acts)
        s = step.end + 20 * US
    return ("GPU-bound: 500 µs kernels queued back to back, cudaDeviceSynchronize per step; "
            "includes python_function and gpu_user_annotation ranges.")


def _sync_every_op(b: TraceBuilder, steps: int, rng: random.Random) -> str:
    """Per step: 5 ops, each launching a 50 µs kernel then cudaStreamSynchronize (with its
    ``Stream Sync`` cuda_sync event) until the kernel ends + 2 µs; 80 µs CPU gaps."""
    s = BASE_NS
    for k in range(1, steps + 1):
        step = b.open("annotation", f"ProfilerStep#{k}", s)
        t = s + 10 * US
        for _ in range(5):
            op = b.open("cpu_op", "aten::nonzero", t, parent=step)
            rt = b.runtime("cudaLaunchKernel", t + 10 * US, t + 20 * US, parent=op)
            b.launch("kernel", "void nonzero_kernel<float>(float const*, long*)", rt, 50 * US)
            sync = b.synchronize("cudaStreamSynchronize", t + 25 * US, parent=op, stream=STREAM)
            b.close(op, sync.end + 10 * US)
            t = op.end + 80 * US
        b.close(step, op.end + 10 * US)
        s = step.end + 30 * US
    return ("Sync after every op: each kernel is followed by cudaStreamSynchronize; the GPU "
            "waits for the CPU between kernels.")


def _two_stream_event_wait(b: TraceBuilder, steps: int, rng: random.Random) -> str:
    """Per step: kernel A (200 µs) on stream 7; cudaEventRecord; cudaStreamWaitEvent makes
    stream 20 wait; kernel B (100 µs) on stream 20 starts when A ends; kernel C (50 µs) on
    stream 7 runs beside B; cudaDeviceSynchronize until B ends + 2 µs."""
    s = BASE_NS
    for k in range(1, steps + 1):
        step = b.open("annotation", f"ProfilerStep#{k}", s)
        t = s + 10 * US
        op1 = b.span("cpu_op", "aten::mm", t, t + 30 * US, parent=step)
        rt = b.runtime("cudaLaunchKernel", t + 10 * US, t + 20 * US, parent=op1)
        a = b.launch("kernel", "ampere_sgemm_128x64_nn", rt, 200 * US, stream=STREAM)
        rec = b.runtime("cudaEventRecord", t + 40 * US, t + 45 * US, parent=step)
        b.stream_wait_event(t + 50 * US, t + 55 * US, parent=step, record=rec,
                            src_stream=STREAM, dst_stream=SIDE_STREAM)
        op2 = b.span("cpu_op", "aten::add", t + 60 * US, t + 90 * US, parent=step)
        rt = b.runtime("cudaLaunchKernel", t + 70 * US, t + 80 * US, parent=op2)
        b.launch("kernel", "void add_kernel<float>(float*, float const*)", rt, 100 * US,
                 stream=SIDE_STREAM, not_before=a.end)
        op3 = b.span("cpu_op", "aten::mul", t + 100 * US, t + 130 * US, parent=step)
        rt = b.runtime("cudaLaunchKernel", t + 110 * US, t + 120 * US, parent=op3)
        b.launch("kernel", "void mul_kernel<float>(float*, float const*)", rt, 50 * US, stream=STREAM)
        sync = b.synchronize("cudaDeviceSynchronize", t + 140 * US, parent=step, stream=None)
        b.close(step, sync.end + 8 * US)
        s = step.end + 20 * US
    return ("Two streams: stream 20 waits (cudaStreamWaitEvent) for an event recorded on "
            "stream 7 after kernel A; kernels B (stream 20) and C (stream 7) overlap.")


def _cuda_graph(b: TraceBuilder, steps: int, rng: random.Random) -> str:
    """Per step: an HtoD memcpy (20 µs), then one cudaGraphLaunch whose correlation is
    carried by 6 kernels of 40 µs with 2 µs device-side gaps, then cudaStreamSynchronize."""
    s = BASE_NS
    for k in range(1, steps + 1):
        step = b.open("annotation", f"ProfilerStep#{k}", s)
        t = s + 10 * US
        op = b.span("cpu_op", "aten::copy_", t, t + 30 * US, parent=step)
        rt = b.runtime("cudaMemcpyAsync", t + 10 * US, t + 20 * US, parent=op)
        b.launch("memcpy", "Memcpy HtoD (Pinned -> Device)", rt, 20 * US, args={"bytes": 4 << 20})
        op = b.span("cpu_op", "CUDAGraph::replay", t + 40 * US, t + 90 * US, parent=step)
        rt = b.runtime("cudaGraphLaunch", t + 50 * US, t + 80 * US, parent=op)
        for j in range(6):
            gap = 0 if j == 0 else 2 * US
            b.launch("kernel", f"void graph_node_{j}<float>(float*)", rt, 40 * US,
                     not_before=b.tail[STREAM] + gap)
        sync = b.synchronize("cudaStreamSynchronize", t + 100 * US, parent=step, stream=STREAM)
        b.close(step, sync.end + 8 * US)
        s = step.end + 20 * US
    return ("CUDA graph replay: one cudaGraphLaunch correlation shared by 6 kernels (one "
            "launch flow start, six ends); the 2 µs gaps between graph kernels are not CPU-induced.")


def _old_format_2021(b: TraceBuilder, steps: int, rng: random.Random) -> str:
    """Per step (2021 layout): memset, HtoD memcpy + cudaStreamSynchronize, 3 conv kernels
    (100 µs, queued), ``aten::item`` with a DtoH copy to pinned memory (asynchronous; a pageable one would block) + cudaStreamSynchronize."""
    s = BASE_NS
    for k in range(1, steps + 1):
        step = b.open("annotation", f"ProfilerStep#{k}", s)
        t = s + 10 * US
        op = b.span("cpu_op", "aten::zero_", t, t + 30 * US, parent=step)
        rt = b.runtime("cudaMemsetAsync", t + 10 * US, t + 20 * US, parent=op)
        b.launch("memset", "Memset (Device)", rt, 3 * US, args={"bytes": 1 << 20, "external id": 0})
        op = b.span("cpu_op", "aten::copy_", t + 40 * US, t + 110 * US, parent=step)
        rt = b.runtime("cudaMemcpyAsync", t + 50 * US, t + 60 * US, parent=op)
        b.launch("memcpy", "Memcpy HtoD (Pageable -> Device)", rt, 30 * US, args={"bytes": 19267584})
        b.synchronize("cudaStreamSynchronize", t + 62 * US, parent=op, stream=STREAM)
        for j in range(3):
            u = t + 120 * US + j * 40 * US
            op = b.span("cpu_op", "aten::cudnn_convolution", u, u + 30 * US, parent=step)
            rt = b.runtime("cudaLaunchKernel", u + 10 * US, u + 20 * US, parent=op)
            b.launch("kernel", "void cudnn::cnn::conv2d_grouped_direct_kernel<float>(float*)", rt,
                     100 * US)
        item = b.open("cpu_op", "aten::item", t + 250 * US, parent=step)
        dense = b.open("cpu_op", "aten::_local_scalar_dense", t + 255 * US, parent=item)
        rt = b.runtime("cudaMemcpyAsync", t + 260 * US, t + 270 * US, parent=dense)
        b.launch("memcpy", "Memcpy DtoH (Device -> Pinned)", rt, 2 * US, args={"bytes": 4})
        sync = b.synchronize("cudaStreamSynchronize", t + 272 * US, parent=dense, stream=STREAM)
        b.close(dense, sync.end + 6 * US)
        b.close(item, dense.end + 5 * US)
        b.close(step, item.end + 10 * US)
        s = step.end + 30 * US
    return ("2021 Kineto layout: bare JSON list, Operator/Runtime/Kernel/Memcpy/Memset "
            "categories, 'external id', GPU tid 'stream 7', string CPU tids in X events, "
            "'async'/'launch' flows, ProfilerStep#N as an Operator.")


def _ns_float(b: TraceBuilder, steps: int, rng: random.Random) -> str:
    """Per step: 3 ops launching ~20 µs kernels and a cudaDeviceSynchronize, every time and
    duration with a seeded sub-µs part, starting at 1712195495519689.047 µs."""

    def j(us: int) -> int:
        return us * US + rng.randrange(1, US)

    s = NS_FLOAT_BASE_NS
    for k in range(1, steps + 1):
        step = b.open("annotation", f"ProfilerStep#{k}", s)
        t = s + j(3)
        for _ in range(3):
            op = b.open("cpu_op", "aten::add", t, parent=step)
            l0 = t + j(2)
            rt = b.runtime("cudaLaunchKernel", l0, l0 + j(5), parent=op)
            b.launch("kernel", "void add_kernel<float>(float*, float const*)", rt, j(20),
                     latency=j(3))
            b.close(op, rt.end + j(1))
            t = op.end + j(4)
        sync = b.synchronize("cudaDeviceSynchronize", t, parent=step, stream=None, ret=j(2))
        b.close(step, sync.end + j(1))
        s = step.end + j(10)
    return ("Fractional µs with 3 decimals at epoch magnitude: exact ns only from the "
            "decimal text (float64 cannot hold them).")


def _shaped(dims: list, types: list, concrete: list | None = None) -> dict[str, Any]:
    a: dict[str, Any] = {"Input Dims": dims, "Input type": types}
    if concrete is not None:
        a["Concrete Inputs"] = concrete
    return a


#: The ops of one ``gemm_shapes`` step: (name, args, kernels [(name, µs)], inner op or None).
_SHAPED_OPS: tuple[tuple[str, dict[str, Any], tuple[tuple[str, int], ...], tuple[str, dict[str, Any]] | None], ...] = (
    ("aten::mm", _shaped([[1024, 4096], [4096, 4096]], ["c10::BFloat16", "c10::BFloat16"]),
     (("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_nn", 200),), None),
    ("aten::mm", _shaped([[100, 1000], [1000, 30]], ["c10::Half", "c10::Half"]),
     (("ampere_fp16_s16816gemm_fp16_64x64_sliced1x2_ldg8_f2f_nn", 10),), None),
    ("aten::linear", _shaped([[64, 512], [1024, 512], [1024]], ["float", "float", "float"]),
     (("ampere_sgemm_64x32_sliced1x4_tn", 30),
      ("void splitKreduce_kernel<32, 16, int, float, float, float, float, true, false, false>(cublasSplitKParams<float>, "
       "float const*, float const*, float*, float const*, float const*, float const*, float const*, float*, void*, long, "
       "float*, int*)", 5)),
     ("aten::addmm", _shaped([[1024], [64, 512], [512, 1024], [], []], ["float", "float", "float", "Scalar", "Scalar"],
                             ["", "", "", "1", "1"]))),
    ("aten::mm", _shaped([[100, 1000], [1000, 30]], ["c10::Half", "c10::Half"]),
     (("ampere_fp16_s16816gemm_fp16_64x64_sliced1x2_ldg8_f2f_nn", 10),), None),
    ("aten::_scaled_dot_product_flash_attention",
     _shaped([[2, 16, 1024, 64]] * 3 + [[], [], [], []],
             ["c10::BFloat16"] * 3 + ["Double", "Bool", "Bool", ""], ["", "", "", "0.", "True", "False", ""]),
     (("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, "
       "cutlass::bfloat16_t>, false, true, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)",
       50),), None),
    ("aten::cudnn_convolution",
     _shaped([[32, 64, 56, 56], [64, 64, 3, 3], [], [], [], [], [], [], []],
             ["float", "float", "IntList", "IntList", "IntList", "Int", "Bool", "Bool", "Bool"],
             ["", "", "[1, 1]", "[1, 1]", "[1, 1]", "1", "False", "False", "True"]),
     (("void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false, false, true>(int, int, int, "
       "float const*, int, float*, float const*, kernel_conv_params, unsigned long long, int, float, float, int, "
       "float const*, float const*, bool, int, int)", 500),), None),
    ("aten::relu", _shaped([[64, 1024]], ["float"]),
     (("void at::native::vectorized_elementwise_kernel<4, at::native::clamp_min_scalar_kernel_cuda>(int, "
       "at::native::clamp_min_scalar_kernel_cuda, at::detail::Array<char*, 2>)", 4),), None),
)


def _gemm_shapes(b: TraceBuilder, steps: int, rng: random.Random) -> str:
    """Per step, in a python_function, ops with recorded shapes 25 µs apart, each launching
    kernels that queue back to back (:data:`_SHAPED_OPS`): ``aten::mm`` bf16 [1024, 4096] x
    [4096, 4096] (200 µs), twice ``aten::mm`` fp16 [100, 1000] x [1000, 30] (10 µs),
    ``aten::linear`` > ``aten::addmm`` fp32 64x512 @ 512x1024 (sgemm 30 µs + split-K
    reduce 5 µs), flash attention bf16 B=2 H=16 S=1024 D=64 causal (50 µs),
    ``aten::cudnn_convolution`` fp32 N=32 C=64 56x56, 64 3x3 filters, stride 1, pad 1
    (500 µs) and ``aten::relu`` (4 µs); then cudaDeviceSynchronize."""
    s = BASE_NS
    for k in range(1, steps + 1):
        step = b.open("annotation", f"ProfilerStep#{k}", s)
        py = b.span("python", "nn/modules/module.py(1527): _call_impl", s + 5 * US,
                    s + 10 * US + len(_SHAPED_OPS) * 25 * US, parent=step)
        for i, (name, args, kernels, inner) in enumerate(_SHAPED_OPS):
            t = s + 10 * US + i * 25 * US
            op = b.span("cpu_op", name, t, t + 20 * US, parent=py, args=dict(args))
            host = b.span("cpu_op", inner[0], t + 2 * US, t + 18 * US, parent=op, args=dict(inner[1])) if inner else op
            for j, (kname, us) in enumerate(kernels):
                rt = b.runtime("cudaLaunchKernel", t + 4 * US + j * 6 * US, t + 8 * US + j * 6 * US, parent=host)
                b.launch("kernel", kname, rt, us * US)
        sync = b.synchronize("cudaDeviceSynchronize", s + 15 * US + len(_SHAPED_OPS) * 25 * US, parent=step,
                             stream=None)
        b.close(step, sync.end + 8 * US)
        s = step.end + 20 * US
    return ("GEMM, attention and convolution ops with recorded shapes (known FLOPs) whose kernels queue back to "
            "back; for opgraph shapes.")


MIB = 1 << 20


def _memory(b: TraceBuilder, steps: int, rng: random.Random) -> str:
    """``profile_memory=True``: ``[memory]`` instants on the main thread (GPU 0, Device Type 1,
    and CPU, Device Type 0 / Device Id -1). GPU 0 holds 64 MiB before the trace (8 MiB of
    it a block freed in step 1), 128 MiB reserved, 160 MiB from step 1's ``aten::relu`` on.
    Per step: ``aten::linear`` > ``aten::empty`` allocates W (4 MiB) and ``aten::linear`` >
    ``aten::addmm`` O (16 MiB, and launches a 400 µs kernel); ``aten::relu`` allocates R
    (16 MiB) then frees O; W is freed outside any op; ``aten::to`` allocates and frees 1 MiB
    of CPU memory; R of the previous step is freed at the step's start, the last R stays
    live. Step 1 also allocates 2 MiB outside any op (freed before the step ends). GPU
    allocated peaks at 102 MiB on step 1's R, with W, O, R and the 2 MiB live (38 MiB) on
    top of the 64 MiB from before the trace; cudaDeviceSynchronize ends each step."""
    gpu, cpu = (1, 0), (0, -1)
    b.mem_start(*gpu, 64 * MIB, 128 * MIB)
    b.mem_start(*cpu, 0, 0)
    addr_w, addr_o, addr_r, addr_x, addr_pre = 0x7F0000000000, 0x7F0000400000, 0x7F0001400000, 0x7F0003000000, 0x7F0004000000
    addr_r2 = 0x7F0002400000
    s = BASE_NS
    prev_r = None
    for k in range(1, steps + 1):
        step = b.open("annotation", f"ProfilerStep#{k}", s)
        r_addr = addr_r if k % 2 else addr_r2
        if prev_r is not None:
            b.mem_event(s + 5 * US, -16 * MIB, prev_r.args["Addr"], op=step, frees=prev_r)
        x = b.mem_event(s + 5 * US, 2 * MIB, addr_x, op=step) if k == 1 else None
        t = s + 10 * US
        lin = b.open("cpu_op", "aten::linear", t, parent=step)
        emp = b.span("cpu_op", "aten::empty", t + 5 * US, t + 15 * US, parent=lin)
        w = b.mem_event(t + 10 * US, 4 * MIB, addr_w, op=emp)
        mm = b.open("cpu_op", "aten::addmm", t + 20 * US, parent=lin)
        o = b.mem_event(t + 25 * US, 16 * MIB, addr_o, op=mm)
        rt = b.runtime("cudaLaunchKernel", t + 30 * US, t + 40 * US, parent=mm)
        b.launch("kernel", "ampere_sgemm_128x64_nn", rt, 400 * US)
        b.close(mm, t + 90 * US)
        b.close(lin, t + 100 * US)
        relu = b.open("cpu_op", "aten::relu", t + 110 * US, parent=step)
        prev_r = b.mem_event(t + 115 * US, 16 * MIB, r_addr, op=relu, reserved=160 * MIB if k == 1 else None)
        b.mem_event(t + 140 * US, -16 * MIB, addr_o, op=relu, frees=o)
        b.close(relu, t + 145 * US)
        b.mem_event(t + 150 * US, -4 * MIB, addr_w, op=step, frees=w)
        if k == 1:
            b.mem_event(t + 155 * US, -8 * MIB, addr_pre, op=step)
            b.mem_event(t + 158 * US, -2 * MIB, addr_x, op=step, frees=x)
        to = b.open("cpu_op", "aten::to", t + 160 * US, parent=step)
        c = b.mem_event(t + 165 * US, MIB, 0x5600000000 + k * 0x1000, op=to, device_type=cpu[0], device=cpu[1])
        b.mem_event(t + 175 * US, -MIB, 0x5600000000 + k * 0x1000, op=to, device_type=cpu[0], device=cpu[1], frees=c)
        b.close(to, t + 180 * US)
        sync = b.synchronize("cudaDeviceSynchronize", t + 190 * US, parent=step, stream=None)
        b.close(step, sync.end + 8 * US)
        s = step.end + 20 * US
    return ("Memory profile: [memory] instants (allocations > 0, frees < 0 bytes, Total Allocated / Total "
            "Reserved) on GPU 0 and the CPU; known peak, per-op bytes and live-at-peak allocations.")


#: Scenario name -> (the function that lays it out, the :class:`TraceBuilder` options it needs).
BUILDERS: dict[str, tuple[Callable[[TraceBuilder, int, random.Random], str], dict[str, bool]]] = {
    "cpu_bound": (_cpu_bound, {}),
    "gpu_bound": (_gpu_bound, {}),
    "sync_every_op": (_sync_every_op, {}),
    "two_stream_event_wait": (_two_stream_event_wait, {}),
    "cuda_graph": (_cuda_graph, {}),
    "old_format_2021": (_old_format_2021, {"old_format": True}),
    "ns_float": (_ns_float, {"fractional": True}),
    "gemm_shapes": (_gemm_shapes, {}),
    "memory": (_memory, {}),
}
