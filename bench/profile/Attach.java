import com.sun.tools.attach.VirtualMachine;

/**
 * Loads a native agent into a running JVM: {@code java Attach.java <pid> <library> <options>}. Used by
 * profile-steady.sh to start and stop async-profiler in the relay's exec jar after its warm-up (jcmd's
 * JVMTI.agent_load splits async-profiler's "key=value,..." options).
 */
public class Attach {
    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            throw new IllegalArgumentException("usage: java Attach.java <pid> <agent library> <options>");
        }
        VirtualMachine vm = VirtualMachine.attach(args[0]);
        try {
            vm.loadAgentPath(args[1], args[2]);
        } finally {
            vm.detach();
        }
    }
}
