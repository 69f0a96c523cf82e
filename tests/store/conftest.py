"""Fixtures for the store tests: a store in tmp_path, file-system watching, both file APIs."""

from __future__ import annotations

from fs_watch import file_system_watch, parametrize_file_api, store, store_file_api

__all__ = ["file_system_watch", "store", "store_file_api"]

pytest_generate_tests = parametrize_file_api
