"""The one data model (`Sample`) and everything that reads or writes it."""

from .sample import Sample, DatasetInfo
from .readers import read_samples, read_jsonl, read_table, read_parallel, from_records

__all__ = ["Sample", "DatasetInfo", "read_samples", "read_jsonl", "read_table", "read_parallel",
           "from_records"]
