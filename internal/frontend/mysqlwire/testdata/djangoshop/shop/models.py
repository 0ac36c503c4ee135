# The models of the ordinary Django flow django_orm.py runs: a foreign key with CASCADE and one
# with SET_NULL to auth's User, unique and unique_together keys, an index, auto_now fields and a
# many-to-many relation.
from django.conf import settings
from django.db import models


class Category(models.Model):
    name = models.CharField(max_length=40, unique=True)


class Tag(models.Model):
    name = models.CharField(max_length=20, unique=True)


class Product(models.Model):
    title = models.CharField(max_length=80)
    sku = models.CharField(max_length=20, null=True, unique=True)
    slug = models.SlugField(max_length=60, unique=True)
    price = models.DecimalField(max_digits=8, decimal_places=2, default=0)
    stock = models.IntegerField(default=0, db_index=True)
    active = models.BooleanField(default=True)
    category = models.ForeignKey(Category, on_delete=models.CASCADE, related_name="products")
    created = models.DateTimeField(auto_now_add=True)
    updated = models.DateTimeField(auto_now=True)
    tags = models.ManyToManyField(Tag, blank=True)

    class Meta:
        unique_together = [("category", "title")]


class Review(models.Model):
    product = models.ForeignKey(Product, on_delete=models.CASCADE, related_name="reviews")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True)
    stars = models.PositiveSmallIntegerField()
    body = models.TextField(blank=True)
