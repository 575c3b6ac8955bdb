"""One router per resource. app.api.main includes them; nothing here builds an application."""
