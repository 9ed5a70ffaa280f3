"""Reminders: a task's offsets, planned per instance as durable timers, fired one by one or as a set."""
