"""Server-rendered dashboard (Jinja2), calling the same services as the JSON API."""
