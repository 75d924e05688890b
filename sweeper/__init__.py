"""sweeper: how much of the Hugging Face Hub runs on a PyTorch device, and what blocks the rest."""

__version__ = "0.1.0"
