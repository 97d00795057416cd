/**
 * Spring Boot auto-configuration of the producer client and its {@code relay.producer.*} properties.
 */
package io.delayrelay.api.autoconfigure;
