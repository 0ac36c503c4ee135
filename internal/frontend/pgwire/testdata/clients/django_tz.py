# Django's PostgreSQL backend (psycopg2) with USE_TZ=True and a database TIME_ZONE that is not
# the server's: at connect it sends SET TIME ZONE 'Asia/Kolkata' (the TimeZone the server
# reported differs), then works in that zone. Prints "case NAME: RESULT" lines.
# Usage: python3 django_tz.py host port user db
import datetime
import sys

import django
from django.conf import settings

host, port, user, db = sys.argv[1:5]
settings.configure(
    DATABASES={"default": {"ENGINE": "django.db.backends.postgresql", "NAME": db, "USER": user, "HOST": host, "PORT": port,
                           "TIME_ZONE": "Asia/Kolkata"}},
    INSTALLED_APPS=[],
    USE_TZ=True,
    TIME_ZONE="Asia/Kolkata",
)
django.setup()
from django.db import connection, models, transaction  # noqa: E402


def case(name, fn):
    try:
        result = fn()
    except Exception as e:  # the error's first line is the result
        result = "error " + str(e).splitlines()[0]
    print(f"case {name}: {result}", flush=True)


class Event(models.Model):
    at = models.DateTimeField()

    class Meta:
        app_label = "tz"
        db_table = "tz_event"


def scalar(sql):
    with connection.cursor() as c:
        c.execute(sql)
        return c.fetchone()[0]


def create():
    with connection.schema_editor() as editor:
        editor.create_model(Event)
    return Event.objects.create(at=datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)).pk


case("create", create)
case("timezone", lambda: scalar("select current_setting('TimeZone')"))
case("text", lambda: scalar("select at::text from tz_event"))
case("read", lambda: Event.objects.get().at.astimezone(datetime.timezone.utc).isoformat())
case("by_date", lambda: Event.objects.filter(at__date=datetime.date(2026, 1, 2)).count())


def in_transaction():
    with transaction.atomic():
        return Event.objects.filter(at__hour=8).count()  # 03:04 UTC is 08:34 in Kolkata


case("hour_in_transaction", in_transaction)
