"""What the pipeline knows of a robot: the mechanism seam (:mod:`.seam`), the tree and its drive chain
(:mod:`.robot`), closed-loop mechanisms (:mod:`.closed_loop`), payloads and plausibility gates."""
