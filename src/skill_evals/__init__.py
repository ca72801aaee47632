"""skill-evals: gate pull requests and releases on agent skills."""

__version__ = "0.1.0"
