"""A fetching process's resolved settings: its project site and its own pacing, decided once by the plan.

The platform's plan (:mod:`focuscrawl.platform.plan`) reads the project file once, resolves each
fetching process's site and pacing into one :class:`FetchSpec` and hands it over as one file
(``--fetch-spec FILE``, :func:`focuscrawl.stream.process.add_common_args`). The process builds its
fetcher from it (:meth:`focuscrawl.stream.process.StreamProcess.fetcher`) and reads no project file:
the site's politeness delay is applied in one place, :func:`focuscrawl.fetch.site.fetcher_for_site`.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from focuscrawl.project.model import Site


class FetchSpec(BaseModel):
    """What a fetching process needs of its project: the site (User-Agent, politeness delay, robots,
    rate-limit headers, OAuth, canonical keys, scope) and the loop's own pace."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    site: Site
    pace: float = Field(0.0, ge=0, description="this process's own least seconds between two requests to a "
                        "host (its loop's fetch budget); the site's politeness_delay holds for every instance besides")

    def write(self, path: str | Path) -> Path:
        """Write the spec as JSON at ``path`` (folders made); returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.model_dump_json(indent=2) + "\n")
        return path

    @classmethod
    def read(cls, path: str | Path) -> "FetchSpec":
        """The spec written at ``path``; a missing or malformed file is a ``ValueError`` naming the fix."""
        try:
            return cls.model_validate_json(Path(path).read_text())
        except OSError as exc:
            raise ValueError(f"--fetch-spec {path}: not readable ({exc.strerror}); the platform's plan writes "
                             "it (`focuscrawl up`), or write one with FetchSpec(site=...).write(path)") from None
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "(the file)"
            raise ValueError(f"--fetch-spec {path}: {where}: {first['msg']}; write the spec anew from the "
                             "project (`focuscrawl up` does)") from None


__all__ = ["FetchSpec"]
