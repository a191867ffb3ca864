"""``hydra/sweeper=signet_optuna``: a Hydra sweeper over Optuna (>= 4) with persistent storage.

Hydra's own Optuna sweeper pins Optuna below 3, and its import warns (fatal under the project's
warnings-as-errors) with the SQLAlchemy 2 that MLflow brings. This one is small and current:

* the search space comes from ``hydra.sweeper.params`` (``{type: float|int|categorical, low, high, log,
  step, choices}``, a list for a categorical, or Hydra's sweep grammar ``interval(...)``, ``range(...)``,
  ``choice(...)``, ``tag(log, ...)``) and from sweep overrides on the command line;
* the study lives in SQLite (``storage``; default ``<sweep dir>/optuna.db``), so a killed sweep rerun with
  the same storage and ``study_name`` resumes: finished trials are kept, a trial that was running when the
  sweep died is run again with the same parameters (its run folder resumes from its checkpoint);
* each trial is one job of the configured launcher (basic, joblib, ray), ``n_jobs`` at a time, and its
  objective is what the task function returns (``python -m signet_rl.train`` returns its validation metric).

Layer: a Hydra plugin, outside ``signet_rl``; it imports Hydra, OmegaConf and Optuna, nothing of the project.
"""
