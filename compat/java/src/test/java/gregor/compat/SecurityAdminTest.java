package gregor.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.ResourceNotFoundException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** ACLs and SCRAM users through AdminClient, on a broker with the authorizer on and ANONYMOUS a super user. */
@Timeout(120)
class SecurityAdminTest {
    static Gregor gregor;
    static Admin admin;

    @BeforeAll
    static void start() throws Exception {
        gregor = Gregor.start("authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "super.users=User:ANONYMOUS");
        admin = Clients.admin(gregor);
    }

    @AfterAll
    static void stop() throws Exception {
        if (admin != null) {
            admin.close();
        }
        if (gregor != null) {
            gregor.close();
        }
    }

    @Test
    void createDescribeDeleteAcls() throws Exception {
        AclBinding readTopic = new AclBinding(new ResourcePattern(ResourceType.TOPIC, "acl-topic", PatternType.LITERAL),
                new AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW));
        AclBinding writePrefix = new AclBinding(new ResourcePattern(ResourceType.TOPIC, "orders-", PatternType.PREFIXED),
                new AccessControlEntry("User:bob", "*", AclOperation.WRITE, AclPermissionType.ALLOW));
        AclBinding denyGroup = new AclBinding(new ResourcePattern(ResourceType.GROUP, "g1", PatternType.LITERAL),
                new AccessControlEntry("User:alice", "127.0.0.1", AclOperation.READ, AclPermissionType.DENY));
        admin.createAcls(List.of(readTopic, writePrefix, denyGroup)).all().get();

        Collection<AclBinding> all = admin.describeAcls(AclBindingFilter.ANY).values().get();
        assertEquals(Set.of(readTopic, writePrefix, denyGroup), Set.copyOf(all));

        AclBindingFilter aliceFilter = new AclBindingFilter(ResourcePatternFilter.ANY,
                new AccessControlEntryFilter("User:alice", null, AclOperation.ANY, AclPermissionType.ANY));
        assertEquals(Set.of(readTopic, denyGroup), Set.copyOf(admin.describeAcls(aliceFilter).values().get()));

        // MATCH finds the prefixed binding for a topic under the prefix.
        AclBindingFilter matching = new AclBindingFilter(
                new ResourcePatternFilter(ResourceType.TOPIC, "orders-eu", PatternType.MATCH), AccessControlEntryFilter.ANY);
        assertEquals(Set.of(writePrefix), Set.copyOf(admin.describeAcls(matching).values().get()));

        Collection<AclBinding> deleted = admin.deleteAcls(List.of(aliceFilter)).all().get();
        assertEquals(Set.of(readTopic, denyGroup), Set.copyOf(deleted));
        assertEquals(Set.of(writePrefix), Set.copyOf(admin.describeAcls(AclBindingFilter.ANY).values().get()));
        admin.deleteAcls(List.of(AclBindingFilter.ANY)).all().get();
        assertTrue(admin.describeAcls(AclBindingFilter.ANY).values().get().isEmpty());
    }

    @Test
    void scramUsers() throws Exception {
        // One alteration per user per request: Kafka 4.4's controller
        // answers DUPLICATE_RESOURCE to a user altered twice in one request,
        // even for two mechanisms (measured by make conformance), and so
        // does Gregor.
        admin.alterUserScramCredentials(List.of(
                new UserScramCredentialUpsertion("alice", new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), "alice-secret"),
                new UserScramCredentialUpsertion("bob", new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), "bob-secret")))
                .all().get();
        admin.alterUserScramCredentials(List.of(
                new UserScramCredentialUpsertion("alice", new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), "alice-secret")))
                .all().get();
        Map<String, UserScramCredentialsDescription> d =
                admin.describeUserScramCredentials(List.of("alice", "bob")).all().get();
        assertEquals(Set.of("alice", "bob"), d.keySet());
        Set<String> alice = d.get("alice").credentialInfos().stream()
                .map(i -> i.mechanism() + "/" + i.iterations()).collect(Collectors.toSet());
        assertEquals(Set.of("SCRAM_SHA_256/8192", "SCRAM_SHA_512/4096"), alice);

        admin.alterUserScramCredentials(List.of(new UserScramCredentialDeletion("alice", ScramMechanism.SCRAM_SHA_256)))
                .all().get();
        d = admin.describeUserScramCredentials(List.of("alice")).all().get();
        assertEquals(List.of("SCRAM_SHA_512/4096"), d.get("alice").credentialInfos().stream()
                .map(i -> i.mechanism() + "/" + i.iterations()).toList());

        admin.alterUserScramCredentials(List.of(new UserScramCredentialDeletion("bob", ScramMechanism.SCRAM_SHA_512)))
                .all().get();
        ExecutionException missing = assertThrows(ExecutionException.class,
                () -> admin.describeUserScramCredentials(List.of("bob")).description("bob").get());
        assertTrue(missing.getCause() instanceof ResourceNotFoundException, "user without credentials: " + missing.getCause());
    }

    /**
     * describeUserScramCredentials() with no names describes every user. The Java client sends
     * Users as an empty array (not null), which Kafka treats as "all users".
     */
    @Test
    void scramDescribeAll() throws Exception {
        admin.alterUserScramCredentials(List.of(
                new UserScramCredentialUpsertion("carol", new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), "carol-secret")))
                .all().get();
        Map<String, UserScramCredentialsDescription> d = admin.describeUserScramCredentials().all().get();
        assertTrue(d.containsKey("carol"), "describe all: " + d);
    }
}
