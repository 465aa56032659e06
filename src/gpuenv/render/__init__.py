"""Rendering: facts, findings and plans as text for people, JSON for programs, installer files."""
