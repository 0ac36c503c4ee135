// A batch of inserts through the PostgreSQL JDBC driver: PreparedStatement.executeBatch writes
// every insert's Bind and Execute before it reads the answers (a Sync now and then, as it
// estimates the answers could fill the socket). Prints one "case batch: RESULT" line, for a
// test that runs it directly on PostgreSQL and through the proxy and compares.
// usage: java -cp postgresql.jar:. BatchInsert JDBC_URL TABLE ROWS
import java.sql.*;

public class BatchInsert {
    public static void main(String[] args) throws Exception {
        String table = args[1];
        int rows = Integer.parseInt(args[2]);
        try (Connection conn = DriverManager.getConnection(args[0])) {
            try (Statement st = conn.createStatement()) {
                st.execute("create table " + table + " (id int primary key, v text)");
            }
            int[] counts;
            try (PreparedStatement ps = conn.prepareStatement("insert into " + table + " values (?, ?)")) {
                for (int i = 0; i < rows; i++) {
                    ps.setInt(1, i);
                    ps.setString(2, "v" + i);
                    ps.addBatch();
                }
                counts = ps.executeBatch();
            }
            int ones = 0;
            for (int c : counts) {
                if (c == 1) {
                    ones++;
                }
            }
            try (Statement st = conn.createStatement();
                 ResultSet rs = st.executeQuery("select count(*), sum(id), count(distinct v) from " + table)) {
                rs.next();
                System.out.println("case batch: " + counts.length + " counts, " + ones + " of one; " +
                    rs.getLong(1) + " rows, ids summing to " + rs.getLong(2) + ", " + rs.getLong(3) + " values");
            }
        }
    }
}
