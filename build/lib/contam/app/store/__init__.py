"""Storage: the only package that imports SQLAlchemy."""
