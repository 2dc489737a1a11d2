"""Errors that reach a user as one line: where (file, line, field) and what."""

from __future__ import annotations


class DialevalError(Exception):
    """Any error dialeval reports to a user; the CLI prints it on one line and exits 2."""


class InputError(DialevalError):
    """Bad input, located as precisely as we can: file, 1-based line, field."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 field: str | None = None):
        self.message = message
        self.path = path
        self.line = line
        self.field = field
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = []
        if self.path is not None:
            where.append(str(self.path) + (f":{self.line}" if self.line is not None else ""))
        elif self.line is not None:
            where.append(f"line {self.line}")
        if self.field is not None:
            where.append(f"field '{self.field}'")
        prefix = ": ".join(where)
        return f"{prefix}: {self.message}" if prefix else self.message


class DialevalWarning(UserWarning):
    """Something a user should know about a result that is still computed (out-of-vocabulary
    words, samples left unscored); the CLI prints it as one `dialeval: warning:` line."""
