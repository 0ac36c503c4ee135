# Django's ordinary flow on one database: migrate (contenttypes, auth and the shop app of
# djangoshop/), then the ORM's create, save, update, delete, foreign keys and many-to-many,
# lookups, aggregates, transactions and auth's users. Prints one line per step: its label and
# what it read back, or the error's number. Values that differ between runs (ids are counted
# from 1 in a new database; times) are not printed, only compared.
# Usage: python3 django_orm.py host port user password db [limits]
# (limits: then the steps DuckDB refuses, listed at the end)
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in testdata
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "djangoshop"))
import django  # noqa: E402
from django.conf import settings  # noqa: E402

host, port, user, password, db = sys.argv[1:6]
settings.configure(
    DATABASES={"default": {"ENGINE": "django.db.backends.mysql", "NAME": db, "USER": user, "PASSWORD": password, "HOST": host, "PORT": port}},
    INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", "shop"],
    PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],
    USE_TZ=True,
)
django.setup()
from decimal import Decimal  # noqa: E402

from django.contrib.auth.models import Group, Permission, User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import DatabaseError, IntegrityError, connection, transaction  # noqa: E402
from django.db.models import Avg, Case, Max, Count, Exists, F, IntegerField, OuterRef, Q, Subquery, Sum, Value, When  # noqa: E402
from shop.models import Category, Product, Review, Tag  # noqa: E402


def step(label, fn):
    try:
        print("%s: %s" % (label, fn()))
    except DatabaseError as e:
        print("%s: error %s" % (label, e.args[0]))


def migrate():
    call_command("migrate", verbosity=0)
    return sorted(t for t in connection.introspection.table_names() if t.startswith(("shop_", "auth_", "django_")))


step("migrate", migrate)
books = Category.objects.create(name="Books")
games = Category.objects.create(name="Games")
step("create", lambda: [Product.objects.create(title=t, slug=s, price=Decimal(p), stock=n, category=c).title
                        for t, s, p, n, c in [("Dune", "dune", "9.99", 3, books), ("Emma", "emma", "5.50", 0, books),
                                              ("Go", "go", "30.00", 7, games)]])
dune = Product.objects.get(slug="dune")
step("tags", lambda: [Tag.objects.create(name=n).name for n in ("classic", "scifi", "board")])
step("m2m add", lambda: dune.tags.add(*Tag.objects.filter(name__in=["classic", "scifi"])) or sorted(dune.tags.values_list("name", flat=True)))
step("reviews", lambda: [Review.objects.create(product=dune, stars=s, body=b).stars for s, b in ((5, "great"), (3, "long"))])


def save_changed():
    dune.price = Decimal("11.50")
    dune.save()
    return Product.objects.get(pk=dune.pk).price


def save_unchanged():
    before = Product.objects.get(pk=dune.pk).updated
    dune.save()
    return Product.objects.get(pk=dune.pk).updated >= before


def save_title():
    dune.title = "Dune Messiah"
    dune.save()
    return Product.objects.get(pk=dune.pk).title


step("save changed (a referenced row)", save_changed)
step("save unchanged", save_unchanged)
step("refresh", lambda: (dune.refresh_from_db(), dune.title, dune.stock, dune.created <= dune.updated)[1:])
step("queryset update a key", lambda: Product.objects.filter(slug="emma").update(slug="emma-2"))
step("filter across the key", lambda: list(Product.objects.filter(category__name="books").order_by("title").values_list("title", flat=True)))
step("select_related", lambda: [(p.title, p.category.name) for p in Product.objects.select_related("category").order_by("title")])
step("prefetch_related", lambda: [(c.name, sorted(p.slug for p in c.products.all()))
                                  for c in Category.objects.prefetch_related("products").order_by("name")])
step("reverse m2m", lambda: list(Tag.objects.filter(product__slug="dune").order_by("name").values_list("name", flat=True)))
step("m2m remove", lambda: dune.tags.remove(Tag.objects.get(name="classic")) or dune.tags.count())
step("get_or_create", lambda: [Tag.objects.get_or_create(name=n)[1] for n in ("scifi", "puzzle")])
step("update_or_create", lambda: Product.objects.update_or_create(slug="go", defaults={"price": Decimal("25.00")})[0].price)
step("bulk_create", lambda: len(Tag.objects.bulk_create([Tag(name="a%d" % i) for i in range(3)])))


step("aggregate", lambda: Product.objects.aggregate(n=Count("id"), s=Sum("stock"), m=Max("price")))
step("annotate", lambda: list(Category.objects.annotate(n=Count("products")).order_by("name").values_list("name", "n")))
step("values group", lambda: list(Product.objects.values("category__name").annotate(total=Sum("stock")).order_by("category__name")))
step("Q and slicing", lambda: list(Product.objects.filter(Q(stock__gt=10) | Q(title__icontains="GO")).order_by("-price")
                                   .values_list("slug", flat=True)[1:3]))
step("Case When", lambda: list(Product.objects.annotate(big=Case(When(price__gt=10, then=Value(1)), default=Value(0),
                                                                     output_field=IntegerField())).order_by("slug").values_list("slug", "big")))
step("Subquery", lambda: list(Category.objects.annotate(top=Subquery(Product.objects.filter(category=OuterRef("pk")).order_by("-price")
                                                                     .values("title")[:1])).order_by("name").values_list("name", "top")))
step("Exists", lambda: list(Product.objects.filter(Exists(Review.objects.filter(product=OuterRef("pk")))).values_list("slug", flat=True)))
step("dates", lambda: (Product.objects.filter(created__year__gte=2000).count(), Product.objects.dates("created", "year").count()))
step("exists count in_bulk", lambda: (Product.objects.filter(slug="go").exists(), Product.objects.count(),
                                      sorted(p.slug for p in Product.objects.in_bulk(field_name="slug").values())))
step("distinct", lambda: list(Product.objects.values_list("category__name", flat=True).distinct().order_by("category__name")))


def duplicate_in_atomic():
    try:
        with transaction.atomic():
            Tag.objects.create(name="kept?")
            Tag.objects.create(name="scifi")
    except IntegrityError as e:
        return "rolled back %s, kept? %s" % (e.args[0], Tag.objects.filter(name="kept?").exists())


def savepoint():
    with transaction.atomic():
        Tag.objects.create(name="outer")
        try:
            with transaction.atomic():
                Tag.objects.create(name="outer")
        except IntegrityError as e:
            inner = e.args[0]
    return inner, Tag.objects.filter(name="outer").count()


def for_update():
    with transaction.atomic():
        p = Product.objects.select_for_update().get(slug="go")
        p.stock -= 1
        p.save()
    return Product.objects.get(slug="go").stock


step("duplicate in atomic", duplicate_in_atomic)
step("select_for_update", for_update)
step("orphan", lambda: Product.objects.create(title="X", slug="x", category_id=999).pk)
step("users", lambda: (User.objects.create_user("ann", "ann@example.com", "pw1").check_password("pw1"),
                       User.objects.create_superuser("root", "r@example.com", "pw2").is_superuser))


def login_and_perms():
    from django.contrib.auth.models import update_last_login
    ann = User.objects.get(username="ann")
    g = Group.objects.create(name="editors")
    g.permissions.add(Permission.objects.get(codename="change_product"))
    ann.groups.add(g)
    ann.user_permissions.add(Permission.objects.get(codename="add_review"))
    update_last_login(None, ann)  # a row auth_user_groups references
    ann.first_name = "Ann"
    ann.save()
    ann = User.objects.get(pk=ann.pk)
    return ann.last_login is not None, ann.has_perm("shop.change_product"), ann.has_perm("shop.add_review"), ann.has_perm("shop.delete_tag")


step("login and permissions", login_and_perms)
step("save a unique_together field", save_title)
step("save update_fields", lambda: (setattr(dune, "stock", 4), dune.save(update_fields=["stock"]), Product.objects.get(pk=dune.pk).stock)[2])
step("queryset update F", lambda: (Product.objects.filter(category=books).update(stock=F("stock") + 1),
                                   list(Product.objects.order_by("slug").values_list("slug", "stock"))))
step("delete a row", lambda: Product.objects.filter(slug="emma-2").delete())


def parent_row_in_use():
    with connection.cursor() as c:
        c.execute("DELETE FROM shop_category WHERE name = 'Games'")


step("delete a parent row in use", parent_row_in_use)
step("change a parent key in use", lambda: Category.objects.filter(name="Books").update(id=77))
step("set null on delete", lambda: (Review.objects.filter(stars=5).update(author=User.objects.get(username="ann")),
                                    User.objects.get(username="ann").delete()[1], Review.objects.filter(author__isnull=True).count()))
step("delete cascades", lambda: dune.delete())
step("after", lambda: (Review.objects.count(), Product.tags.through.objects.count(), list(Product.objects.order_by("slug").values_list("slug", flat=True))))
step("delete a category", lambda: games.delete())
step("left", lambda: (Category.objects.count(), Product.objects.count(), Tag.objects.count()))


def bulk_update_referenced():
    p = Product.objects.create(title="Z", slug="z", category=books, stock=1, price=Decimal("2.50"))
    Review.objects.create(product=p, stars=1)
    p.stock = 2
    Product.objects.bulk_update([p], ["stock"])
    return Product.objects.get(slug="z").stock


step("bulk_update", bulk_update_referenced)
if sys.argv[6:] != ["limits"]:
    sys.exit(0)
# Where the flow differs: a rollback to a savepoint (DuckDB has none), AVG's scale.
step("average", lambda: Product.objects.aggregate(a=Avg("price")))
step("savepoint", savepoint)
