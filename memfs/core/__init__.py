"""The pure core of memfs: no I/O, no SQL, no HTTP, no pyfuse3.

==============  ================================================================
``model``       the domain objects (stores, memories, versions, sessions, changes)
``errors``      the exception tree every layer raises (translated at each edge)
``rules``       SPEC §1 validation: paths, content, metadata, names
``ids``         prefixed ULID identifiers
``config``      every environment variable memfs reads, with its default
``query``       the search query language (SPEC §7)
``records``     the record header of SPEC §6: parse, validate, filters
``visibility``  the SPEC §6 visibility rule (who may see a record)
==============  ================================================================

Everything above this floor (store, backend, fuse, remote, api, cli, front ends)
may import it; it imports nothing of memfs outside itself.
"""
