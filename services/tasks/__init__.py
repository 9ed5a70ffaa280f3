"""Tasks: the lifecycle (create, edit, pause, resume, delete), drafts and edits, reads, pending changes
that wait out the commitment horizon, and the pump tick that hands timers over."""
