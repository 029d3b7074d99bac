"""sb3-hir: hindsight instruction relabeling and DAgger collection for Stable-Baselines3."""

__version__ = "0.1.0"
