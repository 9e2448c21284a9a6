"""``--html`` for the commands that run many checks (``ccac prove``, ``ccac synthesize``): the
run as one self-contained interactive page (:mod:`ccac.report.html_page`), its lines as the
terminal shows them and each counterexample among them as linked, zoomable plots."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click


if TYPE_CHECKING:
    from ccac.analysis.obligation import Check


class RunPage:
    """The page of one run, written once the run's outcome is known; every method does nothing
    without a path, so a command calls them whether or not ``--html`` was given."""

    def __init__(self, path: str | None, title: str = "ccac") -> None:
        if path is not None:
            from ccac.report.html_page import check_html

            check_html(path)   # bad input stops before anything is solved
        self.path = path
        self.title = title
        self.sections: list[Any] = []

    def echo(self, *shown: str) -> None:
        """Lines printed on the terminal, kept for the page as one block."""
        for line in shown:
            click.echo(line)
        if self.path is not None:
            from ccac.report.html_page import Section

            self.sections.append(Section(list(shown)))

    def add(self, section: Any) -> None:
        """A :class:`ccac.report.html_page.Section` of the page (a trace with its text)."""
        if self.path is not None:
            self.sections.append(section)

    def check(self, check: Check) -> None:
        """A proof's check and its counterexample, if it has one (:meth:`Check.section`)."""
        if self.path is not None:
            self.sections.append(check.section())

    def write(self) -> None:
        if self.path is None:
            return
        from ccac.report.html_page import write_sections

        write_sections(self.path, self.title, self.sections)
        click.echo(f"page: {self.path}")
