import java.sql.*;
import java.util.Arrays;

// Meta prints "case: result" lines for the JDBC DatabaseMetaData calls tools make on connect
// (DBeaver, IntelliJ, SQuirreL), against a table with a composite primary key.
public class Meta {
    interface Case { String run(Connection c) throws Exception; }

    static void run(Connection c, String name, Case k) {
        String r;
        try { r = k.run(c); } catch (Exception e) {
            r = "error " + (e instanceof SQLException ? ((SQLException) e).getSQLState() + " " : "") + e.getMessage().split("\n")[0];
        }
        System.out.println("case " + name + ": " + r);
    }

    static String rows(ResultSet rs, String... cols) throws SQLException {
        StringBuilder b = new StringBuilder();
        while (rs.next()) {
            if (b.length() > 0) b.append(";");
            for (int i = 0; i < cols.length; i++) {
                if (i > 0) b.append(",");
                b.append(rs.getString(cols[i]));
            }
        }
        rs.close();
        return b.toString();
    }

    public static void main(String[] a) throws Exception {
        Connection c = DriverManager.getConnection(a[0]);
        String t = a[1];
        try (Statement s = c.createStatement()) {
            s.execute("create table " + t + " (a integer, b varchar, c double precision, primary key (b, a))");
            s.execute("create table " + t + "_nopk (x integer)");
            s.execute("create table " + t + "_ix (id integer primary key, code varchar unique, n integer, m integer)");
            s.execute("create index " + t + "_ix_nm on " + t + "_ix (n, m)");
            s.execute("create table " + t + "_fk (id integer primary key, ix_id integer references " + t + "_ix (id), ix_code varchar references " + t + "_ix (code))");
        }
        DatabaseMetaData md = c.getMetaData();
        run(c, "primary_keys", k -> rows(md.getPrimaryKeys(null, null, t), "TABLE_NAME", "COLUMN_NAME", "KEY_SEQ"));
        run(c, "primary_keys_schema", k -> rows(md.getPrimaryKeys(null, "public", t), "COLUMN_NAME", "KEY_SEQ"));
        run(c, "no_primary_key", k -> "[" + rows(md.getPrimaryKeys(null, null, t + "_nopk"), "COLUMN_NAME") + "]");
        run(c, "tables", k -> rows(md.getTables(null, null, t + "%", new String[]{"TABLE"}), "TABLE_NAME"));
        run(c, "columns", k -> rows(md.getColumns(null, null, t, null), "COLUMN_NAME", "TYPE_NAME"));
        // getIndexInfo as tools list a table's indexes: the primary key's (PostgreSQL names it
        // <table>_pkey), a unique constraint's, and one made by CREATE INDEX.
        run(c, "index_info", k -> rows(md.getIndexInfo(null, null, t + "_ix", false, false), "INDEX_NAME", "COLUMN_NAME", "ORDINAL_POSITION", "NON_UNIQUE"));
        run(c, "index_info_unique", k -> rows(md.getIndexInfo(null, null, t + "_ix", true, false), "INDEX_NAME", "COLUMN_NAME"));
        run(c, "pk_name", k -> rows(md.getPrimaryKeys(null, null, t + "_ix"), "COLUMN_NAME", "PK_NAME"));
        // A table's foreign keys (to the primary key and to a unique column), as tools draw them.
        run(c, "imported_keys", k -> rows(md.getImportedKeys(null, null, t + "_fk"), "PKTABLE_NAME", "PKCOLUMN_NAME", "FKTABLE_NAME", "FKCOLUMN_NAME", "KEY_SEQ",
            "UPDATE_RULE", "DELETE_RULE", "FK_NAME", "PK_NAME", "DEFERRABILITY"));
        run(c, "exported_keys", k -> rows(md.getExportedKeys(null, null, t + "_ix"), "PKTABLE_NAME", "PKCOLUMN_NAME", "FKTABLE_NAME", "FKCOLUMN_NAME", "FK_NAME", "PK_NAME"));
        run(c, "cross_reference", k -> rows(md.getCrossReference(null, null, t + "_ix", null, null, t + "_fk"), "PKCOLUMN_NAME", "FKCOLUMN_NAME"));
        // The server's keywords beyond SQL:2003's (DBeaver asks at connect).
        run(c, "keywords", k -> String.valueOf(Arrays.asList(md.getSQLKeywords().split(",")).containsAll(Arrays.asList("analyze", "ilike"))));
        run(c, "after", k -> { try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("select 7")) { rs.next(); return rs.getString(1); } });
        try (Statement s = c.createStatement()) {
            s.execute("drop table " + t);
            s.execute("drop table " + t + "_nopk");
            s.execute("drop table " + t + "_fk");
            s.execute("drop table " + t + "_ix");
        }
        c.close();
    }
}
