"""Model families: each module builds a model for a config and implementation, makes
batches from fixed seeds, and computes the training loss."""
