"""What-if prediction on the typed graph (docs/predict.md).

Public names only (docs/architecture.md, "Packages"); the code is in
:mod:`opgraph.predict.prediction`."""

from opgraph.predict.prediction import (  # noqa: F401 - the package's public names
    predict,
    PredictResult,
    makespan_change,
    MakespanChange,
)
from opgraph.predict.whatif import (  # noqa: F401 - the package's public names
    parse_transforms,
    Transform,
    WhatIfError,
)
from opgraph.predict.simulation import (  # noqa: F401 - the package's public names
    build_model,
    simulate,
    BoundaryModel,
)

__all__ = [
    "predict",
    "PredictResult",
    "parse_transforms",
    "Transform",
    "WhatIfError",
    "build_model",
    "simulate",
    "BoundaryModel",
    "makespan_change",
    "MakespanChange",
]
