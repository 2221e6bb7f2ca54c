"""Use cases shared by the web app and the CLI; each takes a session and never commits."""
