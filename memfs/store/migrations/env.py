"""Alembic environment: runs migrations on the connection memfs hands over.

memfs calls Alembic from :func:`memfs.store._db.prepare_schema` with
``config.attributes["connection"]`` set; running ``alembic`` from the command line with
``-x url=…`` is supported for development.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from memfs.store.schema import metadata

config = context.config
connection = config.attributes.get("connection")
if connection is not None:
    context.configure(connection=connection, target_metadata=metadata, render_as_batch=True)
    context.run_migrations()
else:
    url = context.get_x_argument(as_dictionary=True)["url"]
    with create_engine(url).connect() as conn:
        context.configure(connection=conn, target_metadata=metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
