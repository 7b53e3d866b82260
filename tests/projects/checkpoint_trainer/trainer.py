"""A library Trainer (krasserm/super-resolution's shape): the model and the optimizer live in a
tf.train.Checkpoint, the step reaches them as `self.checkpoint.model` / `self.checkpoint.optimizer`,
and the manager saves through a second name."""
import tensorflow as tf


class Trainer:
    def __init__(self, model, checkpoint_dir, learning_rate=0.005):
        optimizer = tf.keras.optimizers.Adam(learning_rate)
        self.checkpoint = tf.train.Checkpoint(step=tf.Variable(0), optimizer=optimizer, model=model)
        self.manager = tf.train.CheckpointManager(self.checkpoint, checkpoint_dir, max_to_keep=1)

    def train(self, dataset):
        steps = 0
        for x, y in dataset:
            self.checkpoint.step.assign_add(1)
            loss = self.train_step(x, y)
            steps += 1
            if steps % 4 == 1:
                print("trainer step", steps - 1, float(loss))
        mgr = self.manager
        mgr.save()
        return steps

    @tf.function
    def train_step(self, x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(self.checkpoint.model(x, training=True) - y))
        grads = tape.gradient(loss, self.checkpoint.model.trainable_variables)
        self.checkpoint.optimizer.apply_gradients(zip(grads, self.checkpoint.model.trainable_variables))
        return loss
