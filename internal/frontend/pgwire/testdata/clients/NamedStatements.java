// Server-side prepared statements of the PostgreSQL JDBC driver: a PreparedStatement run past
// the driver's prepareThreshold (5) is a named statement on the server, bound and executed by
// name from then on. One "case NAME: RESULT" line each, for a test that runs this directly on
// PostgreSQL and through the proxy and compares.
// usage: java -cp postgresql.jar:. NamedStatements JDBC_URL
import java.sql.*;

public class NamedStatements {
    public static void main(String[] args) throws Exception {
        try (Connection conn = DriverManager.getConnection(args[0])) {
            try (PreparedStatement ps = conn.prepareStatement("select ?::int * 2 d, ?::text || '!' s, g from generate_series(1, 3) g")) {
                for (int i = 0; i < 30; i++) {
                    ps.setInt(1, i);
                    ps.setString(2, "x" + i);
                    System.out.println("case select " + i + ": " + rows(ps));
                }
            }
            try (PreparedStatement ps = conn.prepareStatement("select 100 / ?::int q")) {
                for (int i = 0; i < 10; i++) {
                    ps.setInt(1, i % 4); // a division by zero now and then: the statement goes on
                    String result;
                    try {
                        result = rows(ps);
                    } catch (SQLException e) {
                        result = "error " + e.getSQLState();
                    }
                    System.out.println("case divide " + i + ": " + result);
                }
            }
            conn.setAutoCommit(false);
            try (PreparedStatement ps = conn.prepareStatement("select ?::int + count(*) from pg_class where relname = 'no such'")) {
                for (int i = 0; i < 10; i++) {
                    ps.setInt(1, i);
                    System.out.println("case in transaction " + i + ": " + rows(ps));
                }
            }
            conn.commit();
        }
    }

    static String rows(PreparedStatement ps) throws SQLException {
        StringBuilder sb = new StringBuilder();
        try (ResultSet rs = ps.executeQuery()) {
            int n = rs.getMetaData().getColumnCount();
            while (rs.next()) {
                for (int c = 1; c <= n; c++) {
                    sb.append(rs.getString(c)).append(c < n ? "|" : ";");
                }
            }
        }
        return sb.toString();
    }
}
