# SQLAlchemy (with PyMySQL) reflecting a table through the proxy, as an ORM does at startup:
# has_table (DESCRIBE `db`.`t`, False on 1146), get_table_names (SHOW FULL TABLES),
# get_columns and get_pk_constraint (SHOW CREATE TABLE). Prints one JSON object.
import json
import sys

import sqlalchemy

host, port, user, db = sys.argv[1:5]
engine = sqlalchemy.create_engine(f"mysql+pymysql://{user}@{host}:{port}/{db}")
insp = sqlalchemy.inspect(engine)
out = {
    "default_schema": insp.default_schema_name,
    "has_compat_t": insp.has_table("compat_t"),
    "has_no_such_t": insp.has_table("no_such_t"),
    "tables": insp.get_table_names(),
    "columns": [[c["name"], str(c["type"]), c["nullable"]] for c in insp.get_columns("compat_t")],
    "pk": insp.get_pk_constraint("compat_t")["constrained_columns"],
}
print(json.dumps(out))
