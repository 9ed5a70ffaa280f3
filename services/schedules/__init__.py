"""Due times: the bridge from a task's schedule to the pure recurrence rules, computed off the event loop."""
