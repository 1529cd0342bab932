"""Training: schedules of the papers, checkpoints with exact resume, logging."""
