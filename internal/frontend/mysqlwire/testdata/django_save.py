# Django's MySQL backend (mysqlclient, which it opens with CLIENT_FOUND_ROWS) saving a row it
# did not change: Model.save() runs an UPDATE and takes "0 rows" for a row that is gone, then
# tries an INSERT (a duplicate key). Prints one line per step.
# Usage: python3 django_save.py host port user password db
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
from django.db import DatabaseError, connection, models, transaction  # noqa: E402


class Item(models.Model):
    name = models.CharField(max_length=20)

    class Meta:
        app_label = "flags"
        db_table = "flags_item"


with connection.schema_editor() as editor:
    editor.create_model(Item)
item = Item.objects.create(name="a")


def step(name, fn):
    try:
        print("%s: %s" % (name, fn()))
    except DatabaseError as e:
        print("%s: error %s" % (name, e.args[0]))


step("save unchanged", lambda: item.save() or Item.objects.count())
step("update unchanged", lambda: Item.objects.filter(pk=item.pk).update(name="a"))
step("update changed", lambda: Item.objects.filter(pk=item.pk).update(name="b"))


def in_transaction():
    with transaction.atomic():
        item.save()  # the row holds "b": changed
        item.save()  # unchanged
        return Item.objects.filter(pk=item.pk).update(name=item.name)


step("save and update unchanged in a transaction", in_transaction)
