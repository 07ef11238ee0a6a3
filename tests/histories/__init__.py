"""Recorded histories of representative runs, replayed by tests/test_replay_histories.py."""
