"""Tree Ensemble Layer: soft trees with smooth-step routing and conditional computation."""
