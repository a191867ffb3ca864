"""Rating: what an injected unit holds in the kind the truth counts, and how a (simulated) user rates it.

The one place below the environments, the learning loop and the evaluation harness that turns injected
units into items (:mod:`~signet_rl.rating.items`) and items into ratings (:mod:`~signet_rl.rating.rater`).
The simulated rater is the only reader of ground truth outside :mod:`signet_rl.evaluation`.
"""

from signet_rl.rating.items import ItemResolver, classify
from signet_rl.rating.rater import Rating, SimulatedRater, observe
from signet_rl.rating.view import RatingView

__all__ = ["ItemResolver", "Rating", "RatingView", "SimulatedRater", "classify", "observe"]
