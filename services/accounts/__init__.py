"""Accounts: registration, login, bearer tokens, passwords, email verification, password reset, and a
user's commitment horizon."""
