"""Pure algorithms: text in, values out. Nothing here imports the database, web or CLI layers."""
