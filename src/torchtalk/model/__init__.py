"""The shared vocabulary of TorchTalk: types and tables every layer uses; imports nothing else of the package."""
