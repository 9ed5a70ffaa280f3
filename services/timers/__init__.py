"""The durable-timer layer: rows with fire_at/link_no, links sent after commit in batches, the gatherer
that turns concurrent links into sets, and the claim that hands rows over as they enter the horizon."""
