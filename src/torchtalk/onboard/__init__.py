"""Getting TorchTalk running for Claude Code: setup and status, the registration, and doctor."""
