// Test-data generator, not part of Gregor: fills in ../avro_canonical.json
// with what Apache Avro Java writes for each case, the golden output of
// TestAvroCanonical_MatchesJava. For each case it parses the refs, then the
// schema, with one Schema.Parser, and records
// schema.toString(refs, false) (Confluent's AvroSchema.canonicalString())
// as "java", or the parser's error as "javaError".
//
// Run from this directory (Java 17, Maven):
//
//   mvn -q dependency:copy-dependencies -DoutputDirectory=lib
//   java -cp 'lib/*' Generate.java ../avro_canonical.json
//
// pom.xml names the Avro version: 1.11.4, 1.12.0 and 1.12.2 write the
// same text for every case and reject the same ones (with other messages).
// lib/ is not committed.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.util.ArrayList;
import java.util.List;
import org.apache.avro.Schema;

public class Generate {
  public static void main(String[] args) throws Exception {
    ObjectMapper mapper = new ObjectMapper();
    File file = new File(args[0]);
    ObjectNode root = (ObjectNode) mapper.readTree(file);
    root.put("avroVersion", Schema.class.getPackage().getImplementationVersion());
    root.put("javaVersion", System.getProperty("java.version"));
    for (JsonNode n : root.get("cases")) {
      ObjectNode c = (ObjectNode) n;
      c.remove("java");
      c.remove("javaError");
      try {
        Schema.Parser parser = new Schema.Parser();
        List<Schema> refs = new ArrayList<>();
        if (c.has("refs")) {
          for (JsonNode r : c.get("refs")) {
            refs.add(parser.parse(r.textValue()));
          }
        }
        Schema s = parser.parse(c.get("schema").textValue());
        c.put("java", s.toString(refs, false));
      } catch (Exception e) {
        c.put("javaError", e.toString());
      }
    }
    mapper.writerWithDefaultPrettyPrinter().writeValue(file, root);
  }
}
