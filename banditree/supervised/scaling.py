"""Input and target scaling (moved to :mod:`banditree.models.dgt.scaling`)."""

from banditree.models.dgt.scaling import FeatureStandardizer, TargetMinMax, fold_scalers

__all__ = ["FeatureStandardizer", "TargetMinMax", "fold_scalers"]
