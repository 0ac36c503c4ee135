# Calls MariaDB's C client library (libmariadb, what the mariadb CLI and mysqlclient use) for
# mysql_list_fields, COM_FIELD_LIST (the mariadb CLI's table-name completion, old PHP and Perl
# clients), against a server, and prints one JSON line per call: each field as the C API
# gives it (name, table, default, length, flags, decimals, character set, type), or the error;
# then that the connection still answers a query.
# Usage: python3 list_fields.py host port user password db table[:wildcard]...
import ctypes
import json
import sys

c_char_p, c_uint, c_ulong, c_void_p = ctypes.c_char_p, ctypes.c_uint, ctypes.c_ulong, ctypes.c_void_p


class Field(ctypes.Structure):  # MYSQL_FIELD
    _fields_ = [(n, c_char_p) for n in ("name", "org_name", "table", "org_table", "db", "catalog", "default")] + \
        [("length", c_ulong), ("max_length", c_ulong)] + \
        [(n, c_uint) for n in ("name_length", "org_name_length", "table_length", "org_table_length", "db_length",
                               "catalog_length", "def_length", "flags", "decimals", "charsetnr")] + \
        [("type", ctypes.c_int), ("extension", c_void_p)]


lib = ctypes.CDLL("libmariadb.so.3")
for name, res, args in [
    ("mysql_init", c_void_p, [c_void_p]),
    ("mysql_real_connect", c_void_p, [c_void_p, c_char_p, c_char_p, c_char_p, c_char_p, c_uint, c_char_p, c_ulong]),
    ("mysql_list_fields", c_void_p, [c_void_p, c_char_p, c_char_p]),
    ("mysql_num_fields", c_uint, [c_void_p]),
    ("mysql_fetch_field_direct", ctypes.POINTER(Field), [c_void_p, c_uint]),
    ("mysql_free_result", None, [c_void_p]),
    ("mysql_errno", c_uint, [c_void_p]),
    ("mysql_error", c_char_p, [c_void_p]),
    ("mysql_query", ctypes.c_int, [c_void_p, c_char_p]),
    ("mysql_store_result", c_void_p, [c_void_p]),
    ("mysql_close", None, [c_void_p]),
]:
    f = getattr(lib, name)
    f.restype, f.argtypes = res, args

host, port, user, password, db = sys.argv[1:6]
conn = lib.mysql_init(None)
if not lib.mysql_real_connect(conn, host.encode(), user.encode(), password.encode(), db.encode(), int(port), None, 0):
    sys.exit("connect: %s" % lib.mysql_error(conn).decode())


def text(b):
    return None if b is None else b.decode()


for call in sys.argv[6:]:
    table, _, wild = call.partition(":")
    res = lib.mysql_list_fields(conn, table.encode(), wild.encode() if wild else None)
    if not res:
        print(json.dumps({"call": call, "error": [lib.mysql_errno(conn), text(lib.mysql_error(conn))]}))
        continue
    fields = []
    for i in range(lib.mysql_num_fields(res)):
        f = lib.mysql_fetch_field_direct(res, i).contents
        fields.append([text(f.name), text(f.org_name), text(f.table), text(f.org_table), text(f.db), text(f.default),
                       f.length, f.flags, f.decimals, f.charsetnr, f.type])
    lib.mysql_free_result(res)
    print(json.dumps({"call": call, "fields": fields}))

ok = lib.mysql_query(conn, b"select 1") == 0
res = lib.mysql_store_result(conn)
if res:
    lib.mysql_free_result(res)
print(json.dumps({"call": "after", "ok": ok, "error": text(lib.mysql_error(conn))}))
lib.mysql_close(conn)
