"""TorchTalk: PyTorch internals, from a raw source tree, with file:line for every answer."""

__version__ = "0.1.0"
