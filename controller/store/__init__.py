"""The state store: SQLAlchemy models, the database handle, and query functions.

Query functions take a session and never commit; the caller owns the transaction.
"""
