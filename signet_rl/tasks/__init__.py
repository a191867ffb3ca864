"""Entry-layer tasks: each turns a Hydra config into a library run, logs it through
:mod:`signet_rl.tracking` and prints what a user needs to read the result (``python -m signet_rl.train
task=<name>`` dispatches here). :mod:`signet_rl.tasks.kg` is the KG path-reasoning task;
:mod:`signet_rl.tasks.kg_rerank` re-ranks a finished KG run from the command line.
"""
