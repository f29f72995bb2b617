"""workloads stage."""
