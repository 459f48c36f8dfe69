"""hear's learned noise suppressor: training data, training, and evaluation against other suppressors."""
