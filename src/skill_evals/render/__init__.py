"""Renderers: a report dict in, text out. Owner: scoring (html: ci)."""
