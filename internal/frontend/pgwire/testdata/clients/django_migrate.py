# django_migrate.py URL: Django 3.2's migrate of its contrib apps (auth, contenttypes, sessions,
# admin, messages) on a fresh database: foreign keys added DEFERRABLE INITIALLY DEFERRED,
# varchar_pattern_ops indexes, ALTER COLUMN of tables with indexes and referenced ones, a DROP
# COLUMN ... CASCADE, varchar(30) to varchar(150) on a unique column; then the ORM, inspectdb of
# the tables made, and admin's migrations undone. Prints one line per step.
import io
import sys
from urllib.parse import urlparse

import django
from django.conf import settings

url = urlparse(sys.argv[1])
settings.configure(
    DATABASES={"default": {"ENGINE": "django.db.backends.postgresql", "HOST": url.hostname, "PORT": url.port,
                           "USER": url.username, "NAME": url.path.lstrip("/")}},
    INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes", "django.contrib.sessions",
                    "django.contrib.admin", "django.contrib.messages"],
    USE_TZ=True, SECRET_KEY="x", DEFAULT_AUTO_FIELD="django.db.models.AutoField")
django.setup()
from django.core.management import call_command


def step(name, f):
    try:
        print(f"{name}: {f()}", flush=True)
    except Exception as e:  # the error's first line is the result
        print(f"{name}: error {type(e).__name__} {str(e).splitlines()[0] if str(e) else ''}", flush=True)


def command(*args, **kw):
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=out, **kw)
    return out.getvalue()


step("migrate", lambda: command("migrate", verbosity=0) or "ok")
from django.contrib.auth.models import Group, Permission, User
from django.contrib.contenttypes.models import ContentType


def orm():
    g = Group.objects.create(name="g1")
    u = User.objects.create_user("ann", password="pw")
    u.groups.add(g)
    u.user_permissions.add(Permission.objects.order_by("id").first())
    return [User.objects.filter(groups__name="g1").count(), User.objects.get(username="ann").has_perm("admin.add_logentry"),
            ContentType.objects.filter(app_label="auth").count()]


step("orm", orm)
# the models and keys it reads (a column's max_length is not: DuckDB describes varchar(n) as text)
step("inspectdb", lambda: [line.strip() for line in command("inspectdb", "auth_user", "django_content_type", "django_admin_log").splitlines()
                           if line.startswith("class") or "unique_together" in line or "ForeignKey" in line or "db_table" in line])
step("migrate admin zero", lambda: command("migrate", "admin", "zero", verbosity=0) or "ok")
step("tables", lambda: sorted(__import__("django.db", fromlist=["connection"]).connection.introspection.table_names()))
