"""(being written) Probability distributions."""
