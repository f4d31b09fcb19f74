"""History store: every run on main lands here (SQLAlchemy; a SQLite file by default, PostgreSQL for a fleet)."""
