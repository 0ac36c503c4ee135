import java.sql.*;

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
            s.execute("create table " + t + " (a integer, b varchar, c double, primary key (b, a))");
            s.execute("create table " + t + "_nopk (x integer)");
        }
        DatabaseMetaData md = c.getMetaData();
        run(c, "primary_keys", k -> rows(md.getPrimaryKeys(null, null, t), "TABLE_NAME", "COLUMN_NAME", "KEY_SEQ"));
        run(c, "primary_keys_schema", k -> rows(md.getPrimaryKeys(null, "main", t), "COLUMN_NAME", "KEY_SEQ"));
        run(c, "no_primary_key", k -> "[" + rows(md.getPrimaryKeys(null, null, t + "_nopk"), "COLUMN_NAME") + "]");
        run(c, "tables", k -> rows(md.getTables(null, null, t + "%", new String[]{"TABLE"}), "TABLE_NAME"));
        run(c, "columns", k -> rows(md.getColumns(null, null, t, null), "COLUMN_NAME", "TYPE_NAME"));
        run(c, "after", k -> { try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("select 7")) { rs.next(); return rs.getString(1); } });
        try (Statement s = c.createStatement()) {
            s.execute("drop table " + t);
            s.execute("drop table " + t + "_nopk");
        }
        c.close();
    }
}
