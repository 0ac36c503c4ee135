# Django's MySQL schema editor migrating models as its migrations do (create, a foreign key,
# add, alter, rename and remove fields, an index, unique_together), then using the tables.
# Prints one line per step: "ok" or the error, and the data the last steps read back.
# Usage: python3 django_migrate.py host port user password db [v [v]] (v: each error's statements; v v: every step's)
import sys

import django
from django.conf import settings

host, port, user, password, db = sys.argv[1:6]
settings.configure(
    DATABASES={"default": {"ENGINE": "django.db.backends.mysql", "NAME": db, "USER": user, "PASSWORD": password, "HOST": host, "PORT": port}},
    INSTALLED_APPS=[],
    USE_TZ=True,
)
django.setup()
from django.db import DatabaseError, connection, models  # noqa: E402


class Author(models.Model):
    name = models.CharField(max_length=20)

    class Meta:
        app_label = "mig"
        db_table = "mig_author"


class Book(models.Model):
    title = models.CharField(max_length=30)
    author = models.ForeignKey(Author, on_delete=models.CASCADE)

    class Meta:
        app_label = "mig"
        db_table = "mig_book"


def field(model, name):
    return model._meta.get_field(name)


def new_field(cls, name, **kw):
    f = cls(**kw)
    f.set_attributes_from_name(name)
    f.model = Book
    return f


last = []


def remember(execute, sql, params, many, context):
    last.append(sql % tuple(params or ()) if params else sql)
    return execute(sql, params, many, context)


def step(name, fn):
    last.clear()
    try:
        with connection.execute_wrapper(remember), connection.schema_editor() as editor:
            fn(editor)
        print("%s: ok" % name)
        if len(sys.argv) > 7:
            print("  %s" % last)
    except DatabaseError as e:
        print("%s: error %s" % (name, e.args[0]))
        if len(sys.argv) > 6:
            print("  %s\n  %s" % (last, e))


step("create author", lambda e: e.create_model(Author))
step("create book (foreign key)", lambda e: e.create_model(Book))
pages = new_field(models.IntegerField, "pages", default=0)
step("add field with a default", lambda e: e.add_field(Book, pages))
step("add nullable field", lambda e: e.add_field(Book, new_field(models.CharField, "isbn", max_length=13, null=True)))
step("alter field max_length", lambda e: e.alter_field(Book, field(Book, "title"), new_field(models.CharField, "title", max_length=60)))
step("alter field null", lambda e: e.alter_field(Book, new_field(models.IntegerField, "pages", default=0),
                                                 new_field(models.IntegerField, "pages", null=True)))
step("alter field type", lambda e: e.alter_field(Book, new_field(models.IntegerField, "pages", null=True),
                                                 new_field(models.BigIntegerField, "pages", null=True)))
step("index the field", lambda e: e.execute("CREATE INDEX `mig_book_isbn_idx` ON `mig_book` (`isbn`)"))
step("rename field", lambda e: e.alter_field(Book, new_field(models.CharField, "isbn", max_length=13, null=True),
                                             new_field(models.CharField, "code", max_length=13, null=True)))
try:
    with connection.cursor() as c:
        c.execute("SHOW INDEX FROM mig_book")
        names = [d[0] for d in c.description]
        keys = sorted(r[names.index("Key_name")] for r in c.fetchall() if r[names.index("Column_name")] == "code")
        print("indexes on the renamed field: %s" % keys)
except DatabaseError as e:
    print("indexes on the renamed field: error %s" % e.args[0])
step("add index", lambda e: e.add_index(Book, models.Index(fields=["title"], name="mig_book_title_idx")))
step("index the renamed field too", lambda e: e.execute("CREATE INDEX `mig_book_code_title_idx` ON `mig_book` (`code`, `title`)"))
step("unique together", lambda e: e.alter_unique_together(Book, [], [("title", "author")]))
step("remove field", lambda e: e.remove_field(Book, new_field(models.CharField, "code", max_length=13, null=True)))

try:
    with connection.cursor() as c:
        c.execute("INSERT INTO mig_author (name) VALUES ('Ann')")
        c.execute("INSERT INTO mig_book (title, author_id, pages) VALUES ('T', 1, 5)")
        c.execute("SELECT b.title, a.name, b.pages FROM mig_book b JOIN mig_author a ON a.id = b.author_id")
        print("rows: %s" % (c.fetchall(),))
        c.execute("INSERT INTO mig_book (title, author_id) VALUES ('U', 99)")
        print("orphan: inserted")
except DatabaseError as e:
    print("orphan: error %s" % e.args[0])
