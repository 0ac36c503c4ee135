// Drives MariaDB Connector/J against a MySQL-protocol server and prints "case NAME: result"
// lines: prepared statements (text and, with useServerPrepStmts=true, binary protocol), a
// batch, DatabaseMetaData's getTables and getColumns, a fetch size, a transaction, errors.
// Usage: java -cp ... ConnectorJProbe JDBC_URL DATABASE (PROBE_MESSAGES set: errors' messages too)
import java.math.BigDecimal;
import java.sql.*;
import java.util.*;

public class ConnectorJProbe {
    static Connection conn;

    interface Probe { String run() throws Exception; }

    static void probe(String name, Probe p) {
        String out;
        try {
            out = p.run();
        } catch (SQLException e) {
            out = "error " + e.getErrorCode() + " " + e.getSQLState();
            if (System.getenv("PROBE_MESSAGES") != null) out += " " + e.getMessage();
        } catch (Exception e) {
            out = "exception " + e.getClass().getName();
        }
        System.out.println("case " + name + ": " + out);
    }

    static String rows(ResultSet rs, String... cols) throws SQLException {
        StringBuilder b = new StringBuilder();
        while (rs.next()) {
            b.append('[');
            for (String c : cols) b.append(rs.getString(c)).append('|');
            b.append(']');
        }
        rs.close();
        return b.toString();
    }

    static String all(ResultSet rs) throws SQLException {
        ResultSetMetaData md = rs.getMetaData();
        StringBuilder b = new StringBuilder();
        for (int i = 1; i <= md.getColumnCount(); i++) {
            b.append(md.getColumnLabel(i)).append(':').append(md.getColumnTypeName(i)).append('/')
                .append(md.getColumnType(i)).append('/').append(md.getPrecision(i)).append('/').append(md.getScale(i)).append(' ');
        }
        while (rs.next()) {
            b.append('[');
            for (int i = 1; i <= md.getColumnCount(); i++) b.append(rs.getString(i)).append('|');
            b.append(']');
        }
        rs.close();
        return b.toString();
    }

    public static void main(String[] args) throws Exception {
        String db = args[1];
        conn = DriverManager.getConnection(args[0]);
        probe("create", () -> {
            try (Statement s = conn.createStatement()) {
                s.execute("drop table if exists jt, jt_auto");
                s.execute("create table jt (id int primary key, name varchar(30) not null, price decimal(10,2), at datetime, note text, b varbinary(8))");
                return "ok";
            }
        });
        probe("prepared insert", () -> {
            try (PreparedStatement ps = conn.prepareStatement("insert into jt values (?, ?, ?, ?, ?, ?)")) {
                ps.setInt(1, 1);
                ps.setString(2, "h\u00e9llo");
                ps.setBigDecimal(3, new BigDecimal("12.34"));
                ps.setTimestamp(4, Timestamp.valueOf("2024-01-02 03:04:05"));
                ps.setNull(5, Types.VARCHAR);
                ps.setBytes(6, new byte[] {0, 1, (byte) 255});
                return String.valueOf(ps.executeUpdate());
            }
        });
        probe("batch", () -> {
            try (PreparedStatement ps = conn.prepareStatement("insert into jt (id, name, price) values (?, ?, ?)")) {
                for (int i = 2; i <= 5; i++) {
                    ps.setInt(1, i);
                    ps.setString(2, "n" + i);
                    ps.setBigDecimal(3, new BigDecimal(i + ".5"));
                    ps.addBatch();
                }
                return Arrays.toString(ps.executeBatch());
            }
        });
        probe("batch with a duplicate", () -> {
            try (PreparedStatement ps = conn.prepareStatement("insert into jt (id, name) values (?, ?)")) {
                for (int id : new int[] {6, 1, 7}) {
                    ps.setInt(1, id);
                    ps.setString(2, "d" + id);
                    ps.addBatch();
                }
                return Arrays.toString(ps.executeBatch());
            } catch (BatchUpdateException e) {
                return "batch error " + e.getErrorCode() + " " + e.getSQLState() + " " + Arrays.toString(e.getUpdateCounts());
            }
        });
        probe("statement batch", () -> {
            try (Statement s = conn.createStatement()) {
                s.addBatch("update jt set note = 'x' where id = 2");
                s.addBatch("update jt set note = 'y' where id > 3");
                s.addBatch("delete from jt where id = 7");
                return Arrays.toString(s.executeBatch());
            }
        });
        probe("prepared select", () -> {
            try (PreparedStatement ps = conn.prepareStatement("select * from jt where id >= ? and name like ? order by id")) {
                ps.setInt(1, 1);
                ps.setString(2, "%");
                return all(ps.executeQuery());
            }
        });
        probe("fetch size", () -> {
            try (PreparedStatement ps = conn.prepareStatement("select id, name from jt order by id")) {
                ps.setFetchSize(2);
                return all(ps.executeQuery());
            }
        });
        probe("generated keys", () -> {
            try (Statement s = conn.createStatement()) {
                s.execute("create table jt_auto (id int auto_increment primary key, v int)");
                s.executeUpdate("insert into jt_auto (v) values (1), (2)", Statement.RETURN_GENERATED_KEYS);
                return rows(s.getGeneratedKeys(), "insert_id");
            }
        });
        probe("transaction", () -> {
            conn.setAutoCommit(false);
            try (PreparedStatement ps = conn.prepareStatement("update jt set price = price + ? where id = ?")) {
                ps.setBigDecimal(1, new BigDecimal("1.00"));
                ps.setInt(2, 1);
                int n = ps.executeUpdate();
                conn.rollback();
                try (Statement s = conn.createStatement()) {
                    return n + " " + rows(s.executeQuery("select price from jt where id = 1"), "price");
                }
            } finally {
                conn.setAutoCommit(true);
            }
        });
        DatabaseMetaData md = conn.getMetaData();
        probe("getTables", () -> rows(md.getTables(db, null, "jt%", new String[] {"TABLE"}), "TABLE_CAT", "TABLE_NAME", "TABLE_TYPE"));
        probe("getColumns", () -> rows(md.getColumns(db, null, "jt", "%"), "COLUMN_NAME", "DATA_TYPE", "TYPE_NAME", "COLUMN_SIZE", "DECIMAL_DIGITS", "NULLABLE", "ORDINAL_POSITION", "IS_AUTOINCREMENT"));
        probe("getPrimaryKeys", () -> rows(md.getPrimaryKeys(db, null, "jt"), "COLUMN_NAME", "KEY_SEQ", "PK_NAME"));
        probe("getIndexInfo", () -> rows(md.getIndexInfo(db, null, "jt", false, false), "INDEX_NAME", "NON_UNIQUE", "COLUMN_NAME"));
        probe("parameter metadata", () -> {
            try (PreparedStatement ps = conn.prepareStatement("select name from jt where id = ?")) {
                return String.valueOf(ps.getParameterMetaData().getParameterCount());
            }
        });
        probe("error", () -> {
            try (Statement s = conn.createStatement()) {
                return all(s.executeQuery("select * from jt_missing"));
            }
        });
        probe("after error", () -> {
            try (Statement s = conn.createStatement()) {
                return all(s.executeQuery("select count(*) as n from jt"));
            }
        });
        conn.close();
    }
}
